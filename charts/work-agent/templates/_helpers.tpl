{{/* Names: 63 characters at most, as label values and Service names must be. */}}
{{- define "work-agent.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* 55 characters, so that "<fullname>-metrics" is still a valid Service name. */}}
{{- define "work-agent.fullname" -}}
{{- if contains .Chart.Name .Release.Name }}
{{- .Release.Name | trunc 55 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 55 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "work-agent.selectorLabels" -}}
app.kubernetes.io/name: {{ include "work-agent.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: work-agent
{{- end }}

{{- define "work-agent.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "work-agent.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: open-cluster-management
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "work-agent.serviceAccountName" -}}
{{- default (include "work-agent.fullname" .) .Values.serviceAccount.name }}
{{- end }}

{{- define "work-agent.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* Exactly one source of the hub kubeconfig: inline contents or an existing Secret. */}}
{{- define "work-agent.hubKubeconfigSecretName" -}}
{{- if and .Values.hubKubeconfig .Values.hubKubeconfigSecret.name }}
{{- fail "set either hubKubeconfig (the chart creates the Secret) or hubKubeconfigSecret.name (an existing Secret), not both" }}
{{- end }}
{{- if .Values.hubKubeconfigSecret.name }}
{{- .Values.hubKubeconfigSecret.name }}
{{- else if .Values.hubKubeconfig }}
{{- printf "%s-hub-kubeconfig" (include "work-agent.fullname" .) }}
{{- else }}
{{- fail "the hub kubeconfig is required: --set-file hubKubeconfig=<path>, or hubKubeconfigSecret.name=<existing secret>" }}
{{- end }}
{{- end }}

{{/* Where the hub kubeconfig Secret is mounted: OCM's path, so its defaults read it. */}}
{{- define "work-agent.hubKubeconfigDir" -}}
/spoke/hub-kubeconfig
{{- end }}

{{- define "work-agent.hubKubeconfigPath" -}}
{{- printf "%s/%s" (include "work-agent.hubKubeconfigDir" .) .Values.hubKubeconfigSecret.key }}
{{- end }}

{{/* Mount directory of listen.tls.secretName (the endpoint's serving certificate). */}}
{{- define "work-agent.servingCertDir" -}}
/etc/work-agent/serving-cert
{{- end }}

{{/* host:port for --listen; an IPv6 host needs brackets. */}}
{{- define "work-agent.listen" -}}
{{- if contains ":" .Values.listen.address }}
{{- printf "[%s]:%d" .Values.listen.address (int64 .Values.listen.port) }}
{{- else }}
{{- printf "%s:%d" .Values.listen.address (int64 .Values.listen.port) }}
{{- end }}
{{- end }}

{{/* --feature-gates value: Gate=bool pairs, sorted (range over a map is sorted). */}}
{{- define "work-agent.featureGates" -}}
{{- $pairs := list }}
{{- range $gate, $enabled := .Values.featureGates }}
{{- $pairs = append $pairs (printf "%s=%t" $gate $enabled) }}
{{- end }}
{{- join "," $pairs }}
{{- end }}
